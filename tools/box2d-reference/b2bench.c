// b2bench: Box2D v3 benchmark scenes as defined in the shared benchmark-scenes.md
// Usage: b2bench SCENE STEPS
//   SCENE: large_pyramid many_pyramids joint_grid tumbler smash rain spinner
//          pyramid44 (large_pyramid with 44 rows: bitroom's rollback benchmark)
// Protocol (doc section 1): build scene; per-step fn(0); step (untimed);
// timed: for s = 1..STEPS-1 { per-step fn(s); b2World_Step(1/60, 4) }.
// Prints wall mean ms/step over the STEPS-1 timed steps (CLOCK_MONOTONIC).
// Single-threaded: workerCount = 1, no enqueueTask (built-in single-thread path).
// B2BENCH_WORKERS=N (2..64): N workers on Box2D's own built-in scheduler
// (no enqueueTask given), to set beside bitroom's `sim --threads N`.
// The world is intentionally not destroyed (process exit frees memory), so that
// process CPU time differences between STEPS values contain only stepping work.

#define _POSIX_C_SOURCE 199309L
#include "box2d/box2d.h"
#include "box2d/math_functions.h"

#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef void CreateFcn( b2WorldId worldId );
typedef void StepFcn( b2WorldId worldId, int stepIndex );

// ---------------------------------------------------------------- large_pyramid
static void CreatePyramid( b2WorldId worldId, int baseCount )
{
	b2World_EnableSleeping( worldId, false );
	{
		b2BodyDef bodyDef = b2DefaultBodyDef();
		bodyDef.position = ( b2Pos ){ 0.0f, -1.0f };
		b2BodyId groundId = b2CreateBody( worldId, &bodyDef );
		b2Polygon box = b2MakeBox( 100.0f, 1.0f );
		b2ShapeDef shapeDef = b2DefaultShapeDef();
		b2CreatePolygonShape( groundId, &shapeDef, &box );
	}
	b2BodyDef bodyDef = b2DefaultBodyDef();
	bodyDef.type = b2_dynamicBody;
	b2ShapeDef shapeDef = b2DefaultShapeDef();
	shapeDef.density = 1.0f;
	float a = 0.5f;
	b2Polygon box = b2MakeSquare( a );
	float shift = 1.0f * a;
	for ( int i = 0; i < baseCount; ++i )
	{
		float y = ( 2.0f * i + 1.0f ) * shift;
		for ( int j = i; j < baseCount; ++j )
		{
			float x = ( i + 1.0f ) * shift + 2.0f * ( j - i ) * shift - a * baseCount;
			bodyDef.position = ( b2Pos ){ x, y };
			b2BodyId bodyId = b2CreateBody( worldId, &bodyDef );
			b2CreatePolygonShape( bodyId, &shapeDef, &box );
		}
	}
}

static void CreateLargePyramid( b2WorldId worldId )
{
	CreatePyramid( worldId, 100 );
}

// The 44-row pyramid (990 boxes) of bitroom's rollback benchmark
// (`rollback_8/pyramid_990_awake`), same layout as large_pyramid.
static void CreatePyramid44( b2WorldId worldId )
{
	CreatePyramid( worldId, 44 );
}

// ---------------------------------------------------------------- many_pyramids
static void CreateSmallPyramid( b2WorldId worldId, int baseCount, float extent, float centerX, float baseY )
{
	b2BodyDef bodyDef = b2DefaultBodyDef();
	bodyDef.type = b2_dynamicBody;
	b2ShapeDef shapeDef = b2DefaultShapeDef();
	b2Polygon box = b2MakeSquare( extent );
	for ( int i = 0; i < baseCount; ++i )
	{
		float y = ( 2.0f * i + 1.0f ) * extent + baseY;
		for ( int j = i; j < baseCount; ++j )
		{
			float x = ( i + 1.0f ) * extent + 2.0f * ( j - i ) * extent + centerX - 0.5f;
			bodyDef.position = ( b2Pos ){ x, y };
			b2BodyId bodyId = b2CreateBody( worldId, &bodyDef );
			b2CreatePolygonShape( bodyId, &shapeDef, &box );
		}
	}
}

static void CreateManyPyramids( b2WorldId worldId )
{
	b2World_EnableSleeping( worldId, false );
	int baseCount = 10;
	float extent = 0.5f;
	int rowCount = 20;
	int columnCount = 20;

	b2BodyDef bodyDef = b2DefaultBodyDef();
	b2BodyId groundId = b2CreateBody( worldId, &bodyDef );

	float groundDeltaY = 2.0f * extent * ( baseCount + 1.0f );
	float groundWidth = 2.0f * extent * columnCount * ( baseCount + 1.0f );
	b2ShapeDef shapeDef = b2DefaultShapeDef();
	float groundY = 0.0f;
	for ( int i = 0; i < rowCount; ++i )
	{
		b2Segment segment = { { -0.5f * groundWidth, groundY }, { 0.5f * groundWidth, groundY } };
		b2CreateSegmentShape( groundId, &shapeDef, &segment );
		groundY += groundDeltaY;
	}

	float baseWidth = 2.0f * extent * baseCount;
	float baseY = 0.0f;
	for ( int i = 0; i < rowCount; ++i )
	{
		for ( int j = 0; j < columnCount; ++j )
		{
			float centerX = -0.5f * groundWidth + j * ( baseWidth + 2.0f * extent ) + 2.0f * extent;
			CreateSmallPyramid( worldId, baseCount, extent, centerX, baseY );
		}
		baseY += groundDeltaY;
	}
}

// ---------------------------------------------------------------- joint_grid
static void CreateJointGrid( b2WorldId worldId )
{
	b2World_EnableSleeping( worldId, false );
	int N = 100;
	b2BodyId* bodies = malloc( (size_t)( N * N ) * sizeof( b2BodyId ) );
	int index = 0;

	b2ShapeDef shapeDef = b2DefaultShapeDef();
	shapeDef.density = 1.0f;
	shapeDef.filter.categoryBits = 2;
	shapeDef.filter.maskBits = ~2u;

	b2Circle circle = { { 0.0f, 0.0f }, 0.4f };
	b2RevoluteJointDef jointDef = b2DefaultRevoluteJointDef();
	b2BodyDef bodyDef = b2DefaultBodyDef();

	for ( int k = 0; k < N; ++k )
	{
		for ( int i = 0; i < N; ++i )
		{
			float fk = (float)k;
			float fi = (float)i;
			if ( k >= N / 2 - 3 && k <= N / 2 + 3 && i == 0 )
				bodyDef.type = b2_staticBody;
			else
				bodyDef.type = b2_dynamicBody;

			bodyDef.position = ( b2Pos ){ fk, -fi };
			b2BodyId body = b2CreateBody( worldId, &bodyDef );
			b2CreateCircleShape( body, &shapeDef, &circle );

			if ( i > 0 )
			{
				jointDef.base.bodyIdA = bodies[index - 1];
				jointDef.base.bodyIdB = body;
				jointDef.base.localFrameA.p = ( b2Vec2 ){ 0.0f, -0.5f };
				jointDef.base.localFrameB.p = ( b2Vec2 ){ 0.0f, 0.5f };
				b2CreateRevoluteJoint( worldId, &jointDef );
			}
			if ( k > 0 )
			{
				jointDef.base.bodyIdA = bodies[index - N];
				jointDef.base.bodyIdB = body;
				jointDef.base.localFrameA.p = ( b2Vec2 ){ 0.5f, 0.0f };
				jointDef.base.localFrameB.p = ( b2Vec2 ){ -0.5f, 0.0f };
				b2CreateRevoluteJoint( worldId, &jointDef );
			}
			bodies[index++] = body;
		}
	}
	free( bodies );
}

// ---------------------------------------------------------------- tumbler
static void CreateTumbler( b2WorldId worldId )
{
	b2BodyId groundId;
	{
		b2BodyDef bodyDef = b2DefaultBodyDef();
		groundId = b2CreateBody( worldId, &bodyDef );
	}
	{
		b2BodyDef bodyDef = b2DefaultBodyDef();
		bodyDef.type = b2_dynamicBody;
		bodyDef.position = ( b2Pos ){ 0.0f, 10.0f };
		b2BodyId bodyId = b2CreateBody( worldId, &bodyDef );

		b2ShapeDef shapeDef = b2DefaultShapeDef();
		shapeDef.density = 50.0f;

		b2Polygon polygon;
		polygon = b2MakeOffsetBox( 0.5f, 10.0f, ( b2Vec2 ){ 10.0f, 0.0f }, b2Rot_identity );
		b2CreatePolygonShape( bodyId, &shapeDef, &polygon );
		polygon = b2MakeOffsetBox( 0.5f, 10.0f, ( b2Vec2 ){ -10.0f, 0.0f }, b2Rot_identity );
		b2CreatePolygonShape( bodyId, &shapeDef, &polygon );
		polygon = b2MakeOffsetBox( 10.0f, 0.5f, ( b2Vec2 ){ 0.0f, 10.0f }, b2Rot_identity );
		b2CreatePolygonShape( bodyId, &shapeDef, &polygon );
		polygon = b2MakeOffsetBox( 10.0f, 0.5f, ( b2Vec2 ){ 0.0f, -10.0f }, b2Rot_identity );
		b2CreatePolygonShape( bodyId, &shapeDef, &polygon );

		float motorSpeed = 25.0f;
		b2RevoluteJointDef jointDef = b2DefaultRevoluteJointDef();
		jointDef.base.bodyIdA = groundId;
		jointDef.base.bodyIdB = bodyId;
		jointDef.base.localFrameA.p = ( b2Vec2 ){ 0.0f, 10.0f };
		jointDef.base.localFrameB.p = ( b2Vec2 ){ 0.0f, 0.0f };
		jointDef.motorSpeed = ( B2_PI / 180.0f ) * motorSpeed;
		jointDef.maxMotorTorque = 1e8f;
		jointDef.enableMotor = true;
		b2CreateRevoluteJoint( worldId, &jointDef );
	}

	int gridCount = 45;
	b2Polygon polygon = b2MakeBox( 0.125f, 0.125f );
	b2BodyDef bodyDef = b2DefaultBodyDef();
	bodyDef.type = b2_dynamicBody;
	b2ShapeDef shapeDef = b2DefaultShapeDef();

	float y = -0.2f * gridCount + 10.0f;
	for ( int i = 0; i < gridCount; ++i )
	{
		float x = -0.2f * gridCount;
		for ( int j = 0; j < gridCount; ++j )
		{
			bodyDef.position = ( b2Pos ){ x, y };
			b2BodyId bodyId = b2CreateBody( worldId, &bodyDef );
			b2CreatePolygonShape( bodyId, &shapeDef, &polygon );
			x += 0.4f;
		}
		y += 0.4f;
	}
}

// ---------------------------------------------------------------- smash
static void CreateSmash( b2WorldId worldId )
{
	b2World_SetGravity( worldId, b2Vec2_zero );
	{
		b2Polygon box = b2MakeBox( 4.0f, 4.0f );
		b2BodyDef bodyDef = b2DefaultBodyDef();
		bodyDef.type = b2_dynamicBody;
		bodyDef.position = ( b2Pos ){ -20.0f, 0.0f };
		bodyDef.linearVelocity = ( b2Vec2 ){ 40.0f, 0.0f };
		b2BodyId bodyId = b2CreateBody( worldId, &bodyDef );
		b2ShapeDef shapeDef = b2DefaultShapeDef();
		shapeDef.density = 8.0f;
		b2CreatePolygonShape( bodyId, &shapeDef, &box );
	}

	float d = 0.4f;
	b2Polygon box = b2MakeSquare( 0.5f * d );
	b2BodyDef bodyDef = b2DefaultBodyDef();
	bodyDef.type = b2_dynamicBody;
	bodyDef.isAwake = false;
	b2ShapeDef shapeDef = b2DefaultShapeDef();

	int columns = 120;
	int rows = 80;
	for ( int i = 0; i < columns; ++i )
	{
		for ( int j = 0; j < rows; ++j )
		{
			bodyDef.position.x = i * d + 30.0f;
			bodyDef.position.y = ( j - rows / 2.0f ) * d;
			b2BodyId bodyId = b2CreateBody( worldId, &bodyDef );
			b2CreatePolygonShape( bodyId, &shapeDef, &box );
		}
	}
}

// ---------------------------------------------------------------- human ragdoll
enum
{
	BONE_COUNT = 11
};

typedef struct Human
{
	b2BodyId bodies[BONE_COUNT];
	b2JointId joints[BONE_COUNT];
	int spawned;
} Human;

typedef struct BoneSpec
{
	float bodyY;
	float c1, c2, radius;
	float linearDamping;
	int parent;
	float pivotY;
	float lower, upper; // in units of pi
	float frictionScale;
	int foot;
	int lowerArm;
} BoneSpec;

// doc section 7 table (scale 1)
static const BoneSpec g_bones[BONE_COUNT] = {
	{ 0.95f, -0.02f, 0.02f, 0.095f, 0.0f, -1, 0.0f, 0.0f, 0.0f, 1.0f, 0, 0 },		  // hip
	{ 1.2f, -0.135f, 0.135f, 0.09f, 0.0f, 0, 1.0f, -0.25f, 0.0f, 0.5f, 0, 0 },		  // torso
	{ 1.475f, -0.038f, 0.039f, 0.075f, 0.1f, 1, 1.4f, -0.3f, 0.1f, 0.25f, 0, 0 },	  // head
	{ 0.775f, -0.125f, 0.125f, 0.06f, 0.0f, 0, 0.9f, -0.05f, 0.4f, 1.0f, 0, 0 },	  // upper left leg
	{ 0.475f, -0.155f, 0.125f, 0.045f, 0.0f, 3, 0.625f, -0.5f, -0.02f, 0.5f, 1, 0 }, // lower left leg
	{ 0.775f, -0.125f, 0.125f, 0.06f, 0.0f, 0, 0.9f, -0.05f, 0.4f, 1.0f, 0, 0 },	  // upper right leg
	{ 0.475f, -0.155f, 0.125f, 0.045f, 0.0f, 5, 0.625f, -0.5f, -0.02f, 0.5f, 1, 0 }, // lower right leg
	{ 1.225f, -0.125f, 0.125f, 0.035f, 0.0f, 1, 1.35f, -0.1f, 0.8f, 0.5f, 0, 0 },	  // upper left arm
	{ 0.975f, -0.125f, 0.125f, 0.03f, 0.1f, 7, 1.1f, -0.2f, 0.3f, 0.1f, 0, 1 },	  // lower left arm
	{ 1.225f, -0.125f, 0.125f, 0.035f, 0.0f, 1, 1.35f, -0.1f, 0.8f, 0.5f, 0, 0 },	  // upper right arm
	{ 0.975f, -0.125f, 0.125f, 0.03f, 0.1f, 9, 1.1f, -0.2f, 0.3f, 0.1f, 0, 1 },	  // lower right arm
};

static void CreateHuman( Human* human, b2WorldId worldId, b2Vec2 position, int groupIndex )
{
	const float s = 1.0f;
	const float frictionTorque = 0.05f;
	const float hertz = 5.0f;
	const float dampingRatio = 0.5f;
	float maxTorque = frictionTorque * s;

	b2BodyDef bodyDef = b2DefaultBodyDef();
	bodyDef.type = b2_dynamicBody;
	bodyDef.sleepThreshold = 0.1f;

	b2ShapeDef shapeDef = b2DefaultShapeDef();
	shapeDef.material.friction = 0.2f;
	shapeDef.filter.groupIndex = -groupIndex;
	shapeDef.filter.categoryBits = 2;
	shapeDef.filter.maskBits = ( 1 | 2 );

	b2ShapeDef footShapeDef = shapeDef;
	footShapeDef.material.friction = 0.05f;
	footShapeDef.filter.categoryBits = 2;
	footShapeDef.filter.maskBits = 1;

	b2Vec2 points[4] = {
		{ -0.03f * s, -0.185f * s },
		{ 0.11f * s, -0.185f * s },
		{ 0.11f * s, -0.16f * s },
		{ -0.03f * s, -0.14f * s },
	};
	b2Hull footHull = b2ComputeHull( points, 4 );
	b2Polygon footPolygon = b2MakePolygon( &footHull, 0.015f * s );

	for ( int i = 0; i < BONE_COUNT; ++i )
	{
		const BoneSpec* b = g_bones + i;
		bodyDef.position = b2Add( ( b2Vec2 ){ 0.0f, b->bodyY * s }, position );
		bodyDef.linearDamping = b->linearDamping;
		b2BodyId bodyId = b2CreateBody( worldId, &bodyDef );
		human->bodies[i] = bodyId;

		b2Capsule capsule = { { 0.0f, b->c1 * s }, { 0.0f, b->c2 * s }, b->radius * s };
		b2CreateCapsuleShape( bodyId, &shapeDef, &capsule );
		if ( b->foot )
		{
			b2CreatePolygonShape( bodyId, &footShapeDef, &footPolygon );
		}

		if ( b->parent >= 0 )
		{
			b2Vec2 pivot = b2Add( ( b2Vec2 ){ 0.0f, b->pivotY * s }, position );
			b2RevoluteJointDef jointDef = b2DefaultRevoluteJointDef();
			jointDef.base.bodyIdA = human->bodies[b->parent];
			jointDef.base.bodyIdB = bodyId;
			jointDef.base.localFrameA.p = b2Body_GetLocalPoint( jointDef.base.bodyIdA, pivot );
			jointDef.base.localFrameB.p = b2Body_GetLocalPoint( jointDef.base.bodyIdB, pivot );
			if ( b->lowerArm )
			{
				jointDef.base.localFrameA.q = b2MakeRot( 0.25f * B2_PI );
			}
			jointDef.enableLimit = true;
			jointDef.lowerAngle = b->lower * B2_PI;
			jointDef.upperAngle = b->upper * B2_PI;
			jointDef.enableMotor = true;
			jointDef.motorSpeed = 0.0f;
			jointDef.maxMotorTorque = b->frictionScale * maxTorque;
			jointDef.enableSpring = hertz > 0.0f;
			jointDef.hertz = hertz;
			jointDef.dampingRatio = dampingRatio;
			jointDef.targetAngle = 0.0f;
			human->joints[i] = b2CreateRevoluteJoint( worldId, &jointDef );
		}
		else
		{
			human->joints[i] = b2_nullJointId;
		}
	}
	human->spawned = 1;
}

static void DestroyHuman( Human* human )
{
	for ( int i = 0; i < BONE_COUNT; ++i )
	{
		if ( B2_IS_NULL( human->joints[i] ) )
			continue;
		b2DestroyJoint( human->joints[i], false );
		human->joints[i] = b2_nullJointId;
	}
	for ( int i = 0; i < BONE_COUNT; ++i )
	{
		b2DestroyBody( human->bodies[i] );
		human->bodies[i] = b2_nullBodyId;
	}
	human->spawned = 0;
}

// ---------------------------------------------------------------- rain
enum
{
	RAIN_ROW_COUNT = 5,
	RAIN_COLUMN_COUNT = 40,
	RAIN_GROUP_SIZE = 5,
};

typedef struct Group
{
	Human humans[RAIN_GROUP_SIZE];
} Group;

static struct
{
	Group groups[RAIN_ROW_COUNT * RAIN_COLUMN_COUNT];
	float gridSize;
	int gridCount;
	int columnCount;
	int columnIndex;
} g_rain;

static void CreateRain( b2WorldId worldId )
{
	memset( &g_rain, 0, sizeof( g_rain ) );
	g_rain.gridSize = 0.5f;
	g_rain.gridCount = 500;
	{
		b2BodyDef bodyDef = b2DefaultBodyDef();
		b2BodyId groundId = b2CreateBody( worldId, &bodyDef );
		b2ShapeDef shapeDef = b2DefaultShapeDef();
		float y = 0.0f;
		float width = g_rain.gridSize;
		float height = g_rain.gridSize;
		for ( int i = 0; i < RAIN_ROW_COUNT; ++i )
		{
			float x = -0.5f * g_rain.gridCount * g_rain.gridSize;
			for ( int j = 0; j <= g_rain.gridCount; ++j )
			{
				b2Polygon box = b2MakeOffsetBox( 0.5f * width, 0.5f * height, ( b2Vec2 ){ x, y }, b2Rot_identity );
				b2CreatePolygonShape( groundId, &shapeDef, &box );
				x += g_rain.gridSize;
			}
			y += 45.0f;
		}
	}
	g_rain.columnCount = 0;
	g_rain.columnIndex = 0;
}

static void CreateGroup( b2WorldId worldId, int rowIndex, int columnIndex )
{
	int groupIndex = rowIndex * RAIN_COLUMN_COUNT + columnIndex;
	float span = g_rain.gridCount * g_rain.gridSize;
	float groupDistance = 1.0f * span / RAIN_COLUMN_COUNT;
	b2Vec2 position;
	position.x = -0.5f * span + groupDistance * ( columnIndex + 0.5f );
	position.y = 40.0f + 45.0f * rowIndex;
	for ( int i = 0; i < RAIN_GROUP_SIZE; ++i )
	{
		CreateHuman( g_rain.groups[groupIndex].humans + i, worldId, position, i + 1 );
		position.x += 0.5f;
	}
}

static void DestroyGroup( int rowIndex, int columnIndex )
{
	int groupIndex = rowIndex * RAIN_COLUMN_COUNT + columnIndex;
	for ( int i = 0; i < RAIN_GROUP_SIZE; ++i )
	{
		DestroyHuman( g_rain.groups[groupIndex].humans + i );
	}
}

static void StepRain( b2WorldId worldId, int stepIndex )
{
	if ( ( stepIndex & 0x7 ) == 0 )
	{
		if ( g_rain.columnCount < RAIN_COLUMN_COUNT )
		{
			for ( int i = 0; i < RAIN_ROW_COUNT; ++i )
				CreateGroup( worldId, i, g_rain.columnCount );
			g_rain.columnCount += 1;
		}
		else
		{
			for ( int i = 0; i < RAIN_ROW_COUNT; ++i )
			{
				DestroyGroup( i, g_rain.columnIndex );
				CreateGroup( worldId, i, g_rain.columnIndex );
			}
			g_rain.columnIndex = ( g_rain.columnIndex + 1 ) % RAIN_COLUMN_COUNT;
		}
	}
}

// ---------------------------------------------------------------- spinner
#define SPINNER_POINT_COUNT 360
static b2JointId g_spinnerJoint;
static volatile float g_spinnerAngle;

static void CreateSpinner( b2WorldId worldId )
{
	b2BodyId groundId;
	{
		b2BodyDef bodyDef = b2DefaultBodyDef();
		groundId = b2CreateBody( worldId, &bodyDef );

		b2Vec2 points[SPINNER_POINT_COUNT];
		b2Rot q = b2MakeRot( -2.0f * B2_PI / SPINNER_POINT_COUNT );
		b2Vec2 p = { 40.0f, 0.0f };
		for ( int i = 0; i < SPINNER_POINT_COUNT; ++i )
		{
			points[i] = ( b2Vec2 ){ p.x, p.y + 32.0f };
			p = b2RotateVector( q, p );
		}

		b2SurfaceMaterial material = { 0 };
		material.friction = 0.1f;

		if ( getenv( "B2BENCH_SEGMENT_RING" ) != NULL )
		{
			// The ring as bitroom builds it (it has no chain shapes): 360
			// separate two-sided segments, no ghost vertices.
			b2ShapeDef segmentDef = b2DefaultShapeDef();
			segmentDef.material = material;
			for ( int i = 0; i < SPINNER_POINT_COUNT; ++i )
			{
				b2Segment segment = { points[i], points[( i + 1 ) % SPINNER_POINT_COUNT] };
				b2CreateSegmentShape( groundId, &segmentDef, &segment );
			}
		}
		else
		{
			b2ChainDef chainDef = b2DefaultChainDef();
			chainDef.points = points;
			chainDef.count = SPINNER_POINT_COUNT;
			chainDef.isLoop = true;
			chainDef.materials = &material;
			chainDef.materialCount = 1;
			b2CreateChain( groundId, &chainDef );
		}
	}
	{
		b2BodyDef bodyDef = b2DefaultBodyDef();
		bodyDef.type = b2_dynamicBody;
		bodyDef.position = ( b2Pos ){ 0.0f, 12.0f };
		bodyDef.enableSleep = false;
		b2BodyId spinnerId = b2CreateBody( worldId, &bodyDef );

		b2Polygon box = b2MakeRoundedBox( 0.4f, 20.0f, 0.2f );
		b2ShapeDef shapeDef = b2DefaultShapeDef();
		shapeDef.material.friction = 0.0f;
		b2CreatePolygonShape( spinnerId, &shapeDef, &box );

		b2RevoluteJointDef jointDef = b2DefaultRevoluteJointDef();
		jointDef.base.bodyIdA = groundId;
		jointDef.base.bodyIdB = spinnerId;
		jointDef.base.localFrameA.p = b2Body_GetLocalPoint( groundId, bodyDef.position );
		jointDef.enableMotor = true;
		jointDef.motorSpeed = 5.0f;
		jointDef.maxMotorTorque = FLT_MAX;
		g_spinnerJoint = b2CreateRevoluteJoint( worldId, &jointDef );
	}

	b2Capsule capsule = { { -0.25f, 0.0f }, { 0.25f, 0.0f }, 0.25f };
	b2Circle circle = { { 0.0f, 0.0f }, 0.35f };
	b2Polygon square = b2MakeSquare( 0.35f );

	b2BodyDef bodyDef = b2DefaultBodyDef();
	bodyDef.type = b2_dynamicBody;
	b2ShapeDef shapeDef = b2DefaultShapeDef();
	shapeDef.material.friction = 0.1f;
	shapeDef.material.restitution = 0.1f;
	shapeDef.density = 0.25f;

	int bodyCount = 2 * 3038;
	float x = -23.0f, y = 2.0f;
	for ( int i = 0; i < bodyCount; ++i )
	{
		bodyDef.position = ( b2Pos ){ x, y };
		b2BodyId bodyId = b2CreateBody( worldId, &bodyDef );
		int remainder = i % 3;
		if ( remainder == 0 )
			b2CreateCapsuleShape( bodyId, &shapeDef, &capsule );
		else if ( remainder == 1 )
			b2CreateCircleShape( bodyId, &shapeDef, &circle );
		else
			b2CreatePolygonShape( bodyId, &shapeDef, &square );
		x += 0.5f;
		if ( x >= 23.0f )
		{
			x = -23.0f;
			y += 0.5f;
		}
	}
}

static void StepSpinner( b2WorldId worldId, int stepIndex )
{
	(void)worldId;
	(void)stepIndex;
	g_spinnerAngle = b2RevoluteJoint_GetAngle( g_spinnerJoint );
}

// ---------------------------------------------------------------- driver
typedef struct Scene
{
	const char* name;
	CreateFcn* createFcn;
	StepFcn* stepFcn;
	int docSteps;
	int expBodies, expShapes, expJoints;
} Scene;

static const Scene g_scenes[] = {
	{ "large_pyramid", CreateLargePyramid, NULL, 500, 5051, 5051, 0 },
	{ "pyramid44", CreatePyramid44, NULL, 68, 991, 991, 0 },
	{ "many_pyramids", CreateManyPyramids, NULL, 200, 22001, 22020, 0 },
	{ "joint_grid", CreateJointGrid, NULL, 500, 10000, 10000, 19800 },
	{ "tumbler", CreateTumbler, NULL, 750, 2027, 2029, 1 },
	{ "smash", CreateSmash, NULL, 300, 9601, 9601, 0 },
	{ "rain", CreateRain, StepRain, 1000, 11001, 15505, 10000 },
	{ "spinner", CreateSpinner, StepSpinner, 500, 6078, 6437, 1 },
};

static int CompareFloat( const void* a, const void* b )
{
	float x = *(const float*)a, y = *(const float*)b;
	return ( x > y ) - ( x < y );
}

static double NowMs( void )
{
	struct timespec ts;
	clock_gettime( CLOCK_MONOTONIC, &ts );
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

// Prints a dynamic shape's body (one shape per body in every scene that
// is dumped).
static bool DumpShape( b2ShapeId shapeId, void* context )
{
	(void)context;
	b2BodyId body = b2Shape_GetBody( shapeId );
	if ( b2Body_GetType( body ) != b2_dynamicBody )
		return true;
	b2Pos p = b2Body_GetPosition( body );
	b2Vec2 v = b2Body_GetLinearVelocity( body );
	printf( "body %.6f %.6f %.6f %.6f %.6f %.4f\n", p.x, p.y, v.x, v.y, b2Body_GetAngularVelocity( body ), b2Body_GetMass( body ) );
	return true;
}

int main( int argc, char** argv )
{
	int sceneCount = (int)( sizeof( g_scenes ) / sizeof( g_scenes[0] ) );
	if ( argc != 3 )
	{
		fprintf( stderr, "usage: %s SCENE STEPS\nscenes:", argv[0] );
		for ( int i = 0; i < sceneCount; ++i )
			fprintf( stderr, " %s(%d)", g_scenes[i].name, g_scenes[i].docSteps );
		fprintf( stderr, "\n" );
		return 2;
	}
	const Scene* scene = NULL;
	for ( int i = 0; i < sceneCount; ++i )
		if ( strcmp( argv[1], g_scenes[i].name ) == 0 )
			scene = g_scenes + i;
	int stepCount = atoi( argv[2] );
	if ( scene == NULL || stepCount < 1 )
	{
		fprintf( stderr, "unknown scene or bad STEPS\n" );
		return 2;
	}

	b2WorldDef worldDef = b2DefaultWorldDef();
	worldDef.enableContinuous = true;
	worldDef.workerCount = 1; // no enqueueTask/finishTask -> built-in single-thread path
	const char* workers = getenv( "B2BENCH_WORKERS" );
	if ( workers != NULL && atoi( workers ) > 1 && atoi( workers ) <= 64 )
		worldDef.workerCount = atoi( workers ); // Box2D's built-in scheduler
	b2WorldId worldId = b2CreateWorld( &worldDef );

	scene->createFcn( worldId );
	// B2BENCH_NO_RECYCLE=1: contact recycling off (the narrow phase runs for
	// every contact every step, as in bitroom).
	if ( getenv( "B2BENCH_NO_RECYCLE" ) != NULL )
		b2World_SetContactRecycleDistance( worldId, 0.0f );
	int profile = getenv( "B2BENCH_PROFILE" ) != NULL;
	b2Profile sum = { 0 };
	// Per step, the whole step and its stages grouped as bitroom's
	// `sim --profile` groups its own (for min / median comparisons).
	enum { G_PREPARE, G_SUBSTEPS, G_FINISH, G_PAIRS, G_COLLIDE, G_STEP, G_COUNT };
	static const char* groupNames[G_COUNT] = { "prepare", "substeps", "finish", "pairs", "collide", "step" };
	float* groups[G_COUNT] = { 0 };
	if ( profile )
		for ( int g = 0; g < G_COUNT; ++g )
			groups[g] = calloc( (size_t)stepCount, sizeof( float ) );

	const float timeStep = 1.0f / 60.0f;
	const int subStepCount = 4;

	if ( scene->stepFcn != NULL )
		scene->stepFcn( worldId, 0 );
	b2World_Step( worldId, timeStep, subStepCount ); // untimed first step

	double t0 = NowMs();
	for ( int s = 1; s < stepCount; ++s )
	{
		if ( scene->stepFcn != NULL )
			scene->stepFcn( worldId, s );
		b2World_Step( worldId, timeStep, subStepCount );
		if ( profile )
		{
			// b2Profile is a struct of floats: sum it field by field.
			b2Profile p = b2World_GetProfile( worldId );
			float* dst = (float*)&sum;
			const float* src = (const float*)&p;
			for ( size_t k = 0; k < sizeof( b2Profile ) / sizeof( float ); ++k )
				dst[k] += src[k];
			int i = s - 1;
			groups[G_PREPARE][i] = p.solverSetup + p.prepareConstraints;
			groups[G_SUBSTEPS][i] = p.integrateVelocities + p.warmStart + p.solveImpulses + p.integratePositions +
									p.relaxImpulses;
			groups[G_FINISH][i] = p.applyRestitution + p.storeImpulses + p.transforms + p.refit + p.bullets +
								  p.hitEvents + p.splitIslands;
			groups[G_PAIRS][i] = p.pairs;
			groups[G_COLLIDE][i] = p.collide;
			groups[G_STEP][i] = p.step;
		}
	}
	double total = NowMs() - t0;
	if ( profile && stepCount > 1 )
	{
		int steps = stepCount - 1;
		printf( "profile groups (ms, min / median over %d steps):\n", steps );
		for ( int g = 0; g < G_COUNT; ++g )
		{
			qsort( groups[g], (size_t)steps, sizeof( float ), CompareFloat );
			printf( "  %-9s %8.3f %8.3f\n", groupNames[g], groups[g][0], groups[g][steps / 2] );
		}
		float n = (float)( stepCount - 1 );
		printf( "profile ms/step: step=%.3f pairs=%.3f collide=%.3f solve=%.3f (setup=%.3f constraints=%.3f: "
				"prepare=%.3f integrate_v=%.3f warm=%.3f solve=%.3f integrate_p=%.3f relax=%.3f restitution=%.3f "
				"store=%.3f) transforms=%.3f refit=%.3f bullets=%.3f sleep=%.3f\n",
				sum.step / n, sum.pairs / n, sum.collide / n, sum.solve / n, sum.solverSetup / n, sum.constraints / n,
				sum.prepareConstraints / n, sum.integrateVelocities / n, sum.warmStart / n, sum.solveImpulses / n,
				sum.integratePositions / n, sum.relaxImpulses / n, sum.applyRestitution / n, sum.storeImpulses / n,
				sum.transforms / n, sum.refit / n, sum.bullets / n, sum.sleepIslands / n );
	}

	// B2BENCH_DUMP=1: every dynamic body at the end, one line each
	// ("body x y vx vy w mass"), to compare the motion with bitroom's
	// `sim --json` (e.g. how far smash's wall has flown apart).
	if ( getenv( "B2BENCH_DUMP" ) != NULL )
	{
		b2AABB all = { { -1.0e6f, -1.0e6f }, { 1.0e6f, 1.0e6f } };
		b2World_OverlapAABB( worldId, ( b2Pos ){ 0.0, 0.0 }, all, b2DefaultQueryFilter(), DumpShape, NULL );
	}

	b2Counters c = b2World_GetCounters( worldId );
	int awake = b2World_GetAwakeBodyCount( worldId );
	int timed = stepCount - 1;
	printf( "scene=%s steps=%d timed_steps=%d wall_total_ms=%.3f wall_mean_ms_per_step=%.4f\n", scene->name, stepCount,
			timed, total, timed > 0 ? total / timed : 0.0 );
	printf( "counters: bodies=%d shapes=%d joints=%d contacts=%d awake_contacts=%d islands=%d awake_bodies=%d "
			"tree_height=%d static_tree_height=%d\n",
			c.bodyCount, c.shapeCount, c.jointCount, c.contactCount, c.awakeContactCount, c.islandCount, awake,
			c.treeHeight, c.staticTreeHeight );
	printf( "doc_expected (end of run): bodies=%d shapes=%d joints=%d -> %s\n", scene->expBodies, scene->expShapes,
			scene->expJoints,
			( c.bodyCount == scene->expBodies && c.shapeCount == scene->expShapes && c.jointCount == scene->expJoints )
				? "MATCH"
				: ( stepCount < scene->docSteps ? "differs (partial run, STEPS < doc steps)" : "MISMATCH" ) );
	// world deliberately not destroyed (see header comment)
	return 0;
}
